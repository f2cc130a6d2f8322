from bench.charts.run import main

main()
