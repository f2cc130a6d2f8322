from bench.scope.run import main

main()
