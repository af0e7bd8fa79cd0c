from placement_api.cli.main import main

main()
