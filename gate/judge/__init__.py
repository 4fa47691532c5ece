"""The optional model judge: a chat-completions client (`client`), the prompt it sends (`prompt`) and the key
it holds (`secret`). The check that uses it is `gate.checks.judge`; it advises, the tests decide."""
