"""Small transcripts in each supported harness's real store shape, written for
deja: the corpus `deja demo` indexes and the fixtures tests build on."""
