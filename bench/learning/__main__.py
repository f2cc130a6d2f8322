from bench.learning.run import main

main()
