from deja.pipeline.entry import main

main()
