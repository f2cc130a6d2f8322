from bench.search.run import main

main()
