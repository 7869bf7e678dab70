from ledger_cli.main import main

main()
