"""Team sync: push the local store's sessions to PostgreSQL, pull them into a replica."""
