// The pinning client.
