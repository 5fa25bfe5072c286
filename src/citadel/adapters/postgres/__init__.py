"""PostgreSQL adapters (psycopg 3, pgvector): the stores behind ``CITADEL_DB=postgresql://…``."""
