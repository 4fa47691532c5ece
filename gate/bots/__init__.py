"""Who is gated: the shipped list of AI coding agents (`agents.yml`), the one grammar of `bots:` patterns, and
the decision that reads a pull request's author, branch and commits against them."""
