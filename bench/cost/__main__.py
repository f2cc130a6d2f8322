from bench.cost.run import main

main()
