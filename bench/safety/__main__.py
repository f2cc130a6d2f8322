from bench.safety.run import main

main()
