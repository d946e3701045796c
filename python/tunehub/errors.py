"""The exceptions of the tunehub client."""


class TunehubError(Exception):
    """Base of every error the client raises."""


class ModelError(TunehubError):
    """A th_model_* call failed; the message is th_model_last_error()'s text."""


class IntegrityError(TunehubError):
    """A bundle's bytes do not match the digest the server stated for them."""


class ServerError(TunehubError):
    """The server answered an error: its HTTP status and its JSON error's code and message."""

    def __init__(self, status, code, message):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
