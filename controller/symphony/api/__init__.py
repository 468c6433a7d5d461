"""The job API: gRPC service for schedulers (symphony.proto) and its server."""
