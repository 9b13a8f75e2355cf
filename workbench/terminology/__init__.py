"""The terminology engine: code system indexes, filters, expansion, validation, lookup."""
