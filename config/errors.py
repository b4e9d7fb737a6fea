"""Domain errors shared by every app. One exception handler (config.api.errors) maps them to JSON."""


class DomainError(Exception):
    status_code = 400
    code = "invalid"

    def __init__(self, message: str, *, code: str | None = None, details=None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.details = details


class NotFound(DomainError):
    status_code = 404
    code = "not_found"

    def __init__(self, message: str = "Not found.", **kwargs):
        super().__init__(message, **kwargs)


class PermissionDenied(DomainError):
    status_code = 403
    code = "permission_denied"


class Conflict(DomainError):
    status_code = 409
    code = "conflict"


class InvalidInput(DomainError):
    status_code = 400
    code = "invalid"


class TooLarge(DomainError):
    status_code = 400
    code = "too_large"


class PayloadTooLarge(DomainError):
    status_code = 413
    code = "payload_too_large"


class ServiceUnavailable(DomainError):
    status_code = 503
    code = "unavailable"
