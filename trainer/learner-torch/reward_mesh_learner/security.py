"""gRPC transport security of the learner's server: TLS, mutual TLS, a bearer token, and the plaintext policy.

The rules and variable names are those of every other mesh server (the TypeScript SDK's
`loadGrpcServerSecurity("LEARNER")`): each setting comes from a command-line flag, else
`LEARNER_GRPC_<NAME>`, else the mesh-wide `REWARD_MESH_GRPC_<NAME>`:

* `--tls-cert-file` / `TLS_CERT_FILE`, `--tls-key-file` / `TLS_KEY_FILE`: PEM certificate chain and key → TLS;
* `--tls-client-ca-file` / `TLS_CLIENT_CA_FILE`: PEM CA bundle → mutual TLS (client certificates required);
* `--token-file` / `TOKEN_FILE`, or `TOKEN`: every call but health checks must carry
  `authorization: Bearer <token>` (compared in constant time), else UNAUTHENTICATED;
* `--insecure` / `INSECURE`: plaintext on a non-loopback address, explicitly allowed.

With none set the server is plaintext and refuses to bind anything but a loopback address.
Health checks (`grpc.health.v1.Health`) are exempt from the token, never from TLS or client certificates.
"""

import hashlib
import hmac
import ipaddress
import re
import ssl
from dataclasses import dataclass
from typing import Mapping, Optional

import grpc

#: Variable prefixes, most specific first.
ENV_PREFIXES = ("LEARNER_GRPC", "REWARD_MESH_GRPC")
#: Shortest bearer token accepted (as the TypeScript side).
MIN_TOKEN_LENGTH = 16
#: Methods exempt from the token: probes cannot send metadata.
TOKEN_EXEMPT_PREFIX = "/grpc.health.v1.Health/"

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
_BEARER = re.compile(r"^Bearer +(\S+)$", re.IGNORECASE)
_TOKEN_CHARS = re.compile(r"^[\x21-\x7e]+$")


class SecurityConfigError(ValueError):
    """A security setting is wrong; the message is `'<setting>' <problem>`."""

    def __init__(self, key: str, problem: str):
        super().__init__(f"'{key}' {problem}")
        self.key = key


@dataclass(frozen=True)
class ServerSecurity:
    """How the server secures its port. The default is plaintext, loopback only."""

    cert_chain: Optional[bytes] = None
    private_key: Optional[bytes] = None
    client_ca: Optional[bytes] = None
    token: Optional[str] = None
    insecure: bool = False

    @property
    def tls(self) -> bool:
        return self.cert_chain is not None

    def describe(self) -> str:
        """One line for logs (never the token)."""
        if not self.tls:
            mode = "plaintext (explicitly allowed)" if self.insecure else "plaintext (loopback only)"
        else:
            mode = "mutual TLS" if self.client_ca is not None else "TLS"
        return mode + (", bearer token" if self.token else "")

    def __repr__(self) -> str:  # keep the token out of tracebacks and logs
        return f"ServerSecurity({self.describe()})"


def is_loopback_host(host: str) -> bool:
    """True for `localhost`, 127.0.0.0/8 and ::1 (what only this machine can reach)."""
    h = host.strip("[]").lower()
    if h == "localhost" or h.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(h)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _setting(flag_value, flag: str, name: str, environ: Mapping[str, str]):
    """(key, value) of the first of the flag, LEARNER_GRPC_<name>, REWARD_MESH_GRPC_<name> that is set."""
    if flag_value not in (None, "", False):
        return flag, flag_value
    for p in ENV_PREFIXES:
        v = environ.get(f"{p}_{name}", "").strip()
        if v:
            return f"{p}_{name}", v
    return None, None


def _read(key: str, path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise SecurityConfigError(key, f"cannot read '{path}' ({e.strerror or e})") from e
    if not data:
        raise SecurityConfigError(key, f"'{path}' is empty")
    return data


def _check_token(key: str, value: str) -> str:
    if not _TOKEN_CHARS.match(value):
        raise SecurityConfigError(key, "must be visible ASCII characters without spaces (it goes into a metadata header)")
    if len(value) < MIN_TOKEN_LENGTH:
        raise SecurityConfigError(key, f"must be at least {MIN_TOKEN_LENGTH} characters, got {len(value)}")
    return value


def _token(token_file_flag: Optional[str], environ: Mapping[str, str]) -> Optional[str]:
    if token_file_flag:
        return _check_token("--token-file", _read("--token-file", token_file_flag).decode("utf-8").strip())
    for p in ENV_PREFIXES:
        value = environ.get(f"{p}_TOKEN", "").strip()
        file = environ.get(f"{p}_TOKEN_FILE", "").strip()
        if value and file:
            raise SecurityConfigError(f"{p}_TOKEN_FILE", f"is set together with {p}_TOKEN; set one of them")
        if value:
            return _check_token(f"{p}_TOKEN", value)
        if file:
            return _check_token(f"{p}_TOKEN_FILE", _read(f"{p}_TOKEN_FILE", file).decode("utf-8").strip())
    return None


def _insecure(flag: bool, environ: Mapping[str, str]):
    if flag:
        return "--insecure", True
    for p in ENV_PREFIXES:
        v = environ.get(f"{p}_INSECURE", "").strip().lower()
        if v in _TRUE:
            return f"{p}_INSECURE", True
        if v in _FALSE:
            return f"{p}_INSECURE", False
        if v:
            raise SecurityConfigError(f"{p}_INSECURE", f"must be a boolean (true/false), got '{v}'")
    return None, False


def load_server_security(
    environ: Mapping[str, str],
    tls_cert_file: Optional[str] = None,
    tls_key_file: Optional[str] = None,
    tls_client_ca_file: Optional[str] = None,
    token_file: Optional[str] = None,
    insecure: bool = False,
) -> ServerSecurity:
    """Reads and checks the settings (flags first, then the environment); raises SecurityConfigError."""
    cert_key, cert_path = _setting(tls_cert_file, "--tls-cert-file", "TLS_CERT_FILE", environ)
    key_key, key_path = _setting(tls_key_file, "--tls-key-file", "TLS_KEY_FILE", environ)
    ca_key, ca_path = _setting(tls_client_ca_file, "--tls-client-ca-file", "TLS_CLIENT_CA_FILE", environ)
    insecure_key, insecure_on = _insecure(insecure, environ)
    if cert_path and not key_path:
        raise SecurityConfigError("--tls-key-file", f"(or LEARNER_GRPC_TLS_KEY_FILE) must be set with {cert_key}")
    if key_path and not cert_path:
        raise SecurityConfigError("--tls-cert-file", f"(or LEARNER_GRPC_TLS_CERT_FILE) must be set with {key_key}")
    if ca_path and not cert_path:
        raise SecurityConfigError(ca_key, "needs TLS: set --tls-cert-file and --tls-key-file (or LEARNER_GRPC_TLS_CERT_FILE/_KEY_FILE) as well")
    if insecure_on and cert_path:
        raise SecurityConfigError(insecure_key, f"is set together with {cert_key}; choose TLS or plaintext")
    cert = key = ca = None
    if cert_path:
        cert, key = _read(cert_key, cert_path), _read(key_key, key_path)
        if b"-----BEGIN CERTIFICATE-----" not in cert:
            raise SecurityConfigError(cert_key, f"'{cert_path}' holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert_path, key_path)
        except (ssl.SSLError, ValueError) as e:
            why = str(e)
            problem = (
                f"'{key_path}' is not the private key of the certificate in {cert_key} ('{cert_path}')"
                if "MISMATCH" in why.upper()
                else f"'{key_path}' is not a usable PEM private key for '{cert_path}' ({why})"
            )
            raise SecurityConfigError(key_key, problem) from e
    if ca_path:
        ca = _read(ca_key, ca_path)
        try:
            ssl.create_default_context(cafile=ca_path)
        except (ssl.SSLError, ValueError) as e:
            raise SecurityConfigError(ca_key, f"'{ca_path}' holds no usable PEM certificate ({e})") from e
        if b"-----BEGIN CERTIFICATE-----" not in ca:
            raise SecurityConfigError(ca_key, f"'{ca_path}' holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
    return ServerSecurity(cert_chain=cert, private_key=key, client_ca=ca, token=_token(token_file, environ), insecure=insecure_on)


#: Variable of the plaintext health-only port (as `<PREFIX>_HEALTH_PORT` of the reward services).
HEALTH_PORT_ENV = "LEARNER_HEALTH_PORT"


def load_health_port(flag_value: Optional[int], environ: Mapping[str, str], port: int) -> Optional[int]:
    """The plaintext health-only port: `--health-port`, else `LEARNER_HEALTH_PORT`, else None (no such port).

    0 picks a free port. It must differ from the main `port` (unless both are 0). Plaintext there is
    allowed on any host: the port serves only `grpc.health.v1.Health` (Kubernetes' gRPC probes cannot
    speak TLS), never the learner. Raises SecurityConfigError naming the setting.
    """
    if flag_value is not None:
        key, value = "--health-port", flag_value
    else:
        raw = environ.get(HEALTH_PORT_ENV, "").strip()
        if not raw:
            return None
        if not re.fullmatch(r"-?\d+", raw):
            raise SecurityConfigError(HEALTH_PORT_ENV, f"must be an integer, got '{raw}'")
        key, value = HEALTH_PORT_ENV, int(raw)
    if not 0 <= value <= 65535:
        raise SecurityConfigError(key, f"must be in [0, 65535], got {value}")
    if value != 0 and value == port:
        raise SecurityConfigError(key, f"must differ from the gRPC port ({port}): the health port is a second, plaintext port")
    return value


def check_bind(host: str, security: ServerSecurity) -> None:
    """Refuses plaintext on a non-loopback host unless explicitly allowed (SecurityConfigError)."""
    if security.tls or security.insecure or is_loopback_host(host):
        return
    raise SecurityConfigError(
        "--insecure",
        f"is not set and TLS is not configured: refusing a plaintext gRPC server on '{host}', which is not a "
        "loopback address. Set --tls-cert-file and --tls-key-file (or LEARNER_GRPC_TLS_CERT_FILE and "
        "LEARNER_GRPC_TLS_KEY_FILE) for TLS, or --insecure (LEARNER_GRPC_INSECURE=1) to accept plaintext explicitly",
    )


def server_credentials(security: ServerSecurity) -> grpc.ServerCredentials:
    """TLS credentials; mutual TLS (client certificates required and verified) when a client CA is set."""
    return grpc.ssl_server_credentials(
        [(security.private_key, security.cert_chain)],
        root_certificates=security.client_ca,
        require_client_auth=security.client_ca is not None,
    )


def check_bearer_token(metadata, expected_digest: bytes) -> Optional[str]:
    """The problem with the call's `authorization` metadata, or None when it carries the token."""
    values = [v for k, v in (metadata or ()) if k == "authorization"]
    if not values:
        return "missing bearer token: send metadata 'authorization: Bearer <token>'"
    if len(values) > 1:
        return "more than one 'authorization' metadata value"
    m = _BEARER.match(values[0]) if isinstance(values[0], str) else None
    if not m:
        return "the 'authorization' metadata is not 'Bearer <token>'"
    given = hashlib.sha256(m.group(1).encode("utf-8")).digest()
    return None if hmac.compare_digest(given, expected_digest) else "invalid bearer token"


def _deny(handler, problem: str):
    """A handler of the same kind as `handler` that ends the call with UNAUTHENTICATED."""

    def abort(_request, context):
        context.abort(grpc.StatusCode.UNAUTHENTICATED, problem)

    kinds = {
        (False, False): grpc.unary_unary_rpc_method_handler,
        (False, True): grpc.unary_stream_rpc_method_handler,
        (True, False): grpc.stream_unary_rpc_method_handler,
        (True, True): grpc.stream_stream_rpc_method_handler,
    }
    make = kinds[(handler.request_streaming, handler.response_streaming)]
    return make(abort, request_deserializer=handler.request_deserializer, response_serializer=handler.response_serializer)


class BearerTokenInterceptor(grpc.ServerInterceptor):
    """Ends every call without the right bearer token with UNAUTHENTICATED before its handler runs."""

    def __init__(self, token: str):
        self._expected = hashlib.sha256(token.encode("utf-8")).digest()

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None or handler_call_details.method.startswith(TOKEN_EXEMPT_PREFIX):
            return handler
        problem = check_bearer_token(handler_call_details.invocation_metadata, self._expected)
        return handler if problem is None else _deny(handler, problem)
