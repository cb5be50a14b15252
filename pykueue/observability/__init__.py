"""Observability shared by the webhook and the controller: structured logging setup."""
