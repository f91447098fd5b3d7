"""The transaction coordinator: transactional ids, producer epochs, markers (Kafka's
``TransactionCoordinator``), with its state in the metadata store."""
