from darling.cli.main import app

app()
