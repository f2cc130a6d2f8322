from bench.loop.run import main

main()
