from placement_api.cli import main

main()
