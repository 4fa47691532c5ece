"""The repository's policy: model, schema, presets and loader."""
