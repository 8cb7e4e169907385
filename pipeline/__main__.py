from deja.entry import main

main()
