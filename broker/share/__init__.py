"""KIP-932 share partitions on their leaders: acquisition, acknowledgement and the
durable state behind them."""
