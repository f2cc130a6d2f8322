from bench.files.run import main

main()
