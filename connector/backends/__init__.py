"""One module per database; each turns ``RowBatch``es into its wire format and reads its replies."""
