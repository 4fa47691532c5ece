"""GitHub at the edge: the PyGithub client (built once), publishing a verdict, the Actions runner's files."""
