import typer
app = typer.Typer(help="Search, import, export and maintain temper's memory.", no_args_is_help=True)
