import { DURATION_PATTERN, MAX_DURATION_MS, SERVICE_REF_SCHEMA } from '../sdk/index.ts';
import type { JsonSchema } from '../sdk/index.ts';
import { FRONTEND_POLICIES_SCHEMA } from './frontend-policies-schema.ts';

/** A TCP port, 0-65535 (0: the system picks a free one). */
const PORT = '(?:6553[0-5]|655[0-2]\\d|65[0-4]\\d{2}|6[0-4]\\d{3}|[1-5]\\d{4}|\\d{1,4})';
const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
/**
 * A listen address: `off`, or a host and a port in range. The host is an IPv4 address, `[IPv6]`, or a DNS name
 * with a letter in it (so `999.1.1.1` is refused here rather than by the resolver at start).
 */
export const ADDRESS_PATTERN =
  `^(?:off|(?:${OCTET}\\.){3}${OCTET}:${PORT}|\\[[0-9a-fA-F:.]+\\]:${PORT}|(?=[^:]*[A-Za-z])${LABEL}(?:\\.${LABEL})*:${PORT})$`;

/**
 * Shared definitions plugins may reference as `switchyard:defs#/$defs/<name>`.
 * `x-hint` is shown instead of the raw pattern when a value does not match.
 */
export const SHARED_DEFS: Record<string, JsonSchema> = {
  /** A `service` reference of an upstream address (ADR 0030), shared by every plugin that takes one. */
  serviceRef: SERVICE_REF_SCHEMA as unknown as JsonSchema,
  duration: {
    type: 'string',
    pattern: DURATION_PATTERN,
    maxDurationMs: MAX_DURATION_MS,
    'x-hint': 'a duration such as `500ms`, `60s` or `1m30s`',
    description: 'A duration in Go syntax: a sequence of numbers with units ns, us, ms, s, m, h (`500ms`, `1m30s`), at most `596h`.',
  },
  stringMatch: {
    type: 'object',
    description: 'How a value must match: exactly one of `exact` (string equality) or `regex` (must match the whole value).',
    properties: {
      exact: { type: 'string', description: 'The value must equal this string.' },
      regex: { type: 'string', format: 'regex', description: 'The whole value must match this regular expression.' },
    },
    additionalProperties: false,
    exactlyOneOf: ['exact', 'regex'],
  },
  address: {
    type: 'string',
    pattern: ADDRESS_PATTERN,
    'x-hint': '`host:port` (a host name, an IPv4 address or `[IPv6]`, and a port 0-65535) or `off`',
    description: 'A listen address `host:port` (`[::]:15000` for IPv6), or `off` to disable the server.',
  },
  headerName: {
    type: 'string',
    pattern: "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$",
    'x-hint': 'an HTTP header name (letters, digits and !#$%&\'*+-.^_`|~)',
    description: 'An HTTP header name.',
  },
};

const nameMatch = (what: string): JsonSchema => ({
  type: 'object',
  description: `A ${what} condition.`,
  properties: {
    name: { type: 'string', minLength: 1, description: `The ${what} name${what === 'header' ? ' (case-insensitive)' : ''}.` },
    value: { $ref: '#/$defs/stringMatch', description: `How the ${what} value must match.` },
  },
  required: ['name', 'value'],
  additionalProperties: false,
});

/** The kernel's own part of the config schema. `x-slot` marks where installed plugins are spliced in. */
export const SKELETON_DEFS: Record<string, JsonSchema> = {
  staticConfig: {
    type: 'object',
    description: 'Static settings, read once at start (changes need a restart).',
    properties: {
      adminAddr: { $ref: '#/$defs/address', description: 'Admin server (`/config_dump`, `/ui`, plugin endpoints such as `/keys`). Default `127.0.0.1:15000`; `off` disables it.' },
      adminUi: {
        type: 'object',
        description: 'The admin UI at `/ui` on `adminAddr` (docs/admin-ui.md) and the credentials of the admin address. With `basicAuth` or `apiKey`, every endpoint of `adminAddr` (`/ui`, `/config_dump`, `/keys`, ...) asks for them on any address; `/metrics` and `/healthz/ready` stay open. Without, `/ui` is served only on a loopback `adminAddr` and the other endpoints to whoever reaches the address.',
        properties: {
          enabled: { type: 'boolean', description: 'Serve `/ui`. Default true.' },
          basicAuth: {
            type: 'object',
            description: 'Require HTTP basic credentials (what a browser asks for) for every endpoint of `adminAddr`.',
            properties: {
              // A colon ends the user name in a basic credential (RFC 7617): such a name could never sign in.
              username: { type: 'string', minLength: 1, pattern: '^[^:]+$', 'x-hint': 'a user name without `:`', description: 'The user name (no `:`).' },
              password: { type: 'string', minLength: 12, 'x-secret': true, description: 'The password, at least 12 characters (use `${VAR}` to keep it out of the file).' },
            },
            required: ['username', 'password'],
            additionalProperties: false,
          },
          // A header value is trimmed and ASCII: a key with spaces or other characters could never be sent.
          apiKey: { type: 'string', minLength: 16, pattern: '^[!-~]+$', 'x-hint': 'printable ASCII without spaces', 'x-secret': true, description: 'Require this key for every endpoint of `adminAddr` as `Authorization: Bearer <key>` or `x-api-key` (scripts and `switchyard keys`, which sends `ADMIN_API_KEY`; browsers use `basicAuth`).' },
          endpointTimeout: {
            $ref: '#/$defs/duration',
            description: 'How long a plugin endpoint of `adminAddr` (`/keys`, a third-party plugin\'s) may take to answer; then 504, logged naming the plugin (ADR 0154, 0155). More than `0s`. Default `30s`.',
          },
        },
        additionalProperties: false,
      },
      statsAddr: { $ref: '#/$defs/address', description: 'Prometheus server (`/metrics`). Default `0.0.0.0:15020`; `off` disables it.' },
      readinessAddr: {
        $ref: '#/$defs/address',
        description: 'Readiness server (`/healthz/ready`, and `/healthz/live` for liveness probes). Default `0.0.0.0:15021`; `off` disables it.',
      },
      logging: {
        type: 'object',
        description: 'Process logging.',
        properties: {
          level: { enum: ['debug', 'info', 'warn', 'error'], description: 'Lowest level written. Default `info`.' },
          format: { enum: ['json', 'text'], description: 'Line format. Default `text`.' },
          accessLog: { type: 'boolean', description: 'Write one line per request at `info`. Default true.' },
          filter: {
            type: 'string',
            minLength: 1,
            description: 'CEL expression deciding whether a request is logged (`!request.path.startsWith("/healthz")`). Default: every request. Compiled at load.',
          },
          fields: {
            type: 'object',
            description: 'Access-log fields to add or drop.',
            properties: {
              add: {
                type: 'object',
                description: 'Field name to CEL expression (`user: jwt.sub`), evaluated when the request is logged; a field whose expression fails is left out. Sensitive headers (`authorization`, cookies, API keys) and `apiKey.key` read as `<redacted>`.',
                additionalProperties: { type: 'string', minLength: 1 },
              },
              remove: {
                type: 'array',
                description: 'Names of fields not to write (`http.host`, `src.addr`, `request.id`, \u2026), built-in or added by policies.',
                items: { type: 'string', minLength: 1 },
              },
            },
            additionalProperties: false,
          },
        },
        additionalProperties: false,
      },
      tracing: {
        type: 'object',
        description:
          'OpenTelemetry traces, exported over OTLP (docs/observability.md "Traces"). Absent: no tracing, and the tracing SDK is not loaded. Needs a restart to change.',
        properties: {
          otlpEndpoint: {
            type: 'string',
            minLength: 1,
            description:
              'Where spans are sent: `http://host:port` (or `https://`). With `otlpProtocol: http`, `path` is appended. Required unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set. Credentials go in `headers`, not in the URL.',
          },
          otlpProtocol: { enum: ['grpc', 'http'], description: 'OTLP transport, protobuf either way: `grpc` (default) or `http`.' },
          path: { type: 'string', pattern: '^/', description: 'The OTLP/HTTP path appended to `otlpEndpoint`. Default `/v1/traces`.' },
          headers: {
            type: 'object',
            // Export headers are the trace backend's credentials, whatever their names (`x-honeycomb-team`).
            'x-secret': true,
            description: 'Headers (gRPC metadata) sent with every export, such as an API key of the trace backend. Their values are secret: never in `/config_dump`, errors or logs.',
            additionalProperties: { type: 'string' },
          },
          randomSampling: {
            oneOf: [{ type: 'boolean' }, { type: 'number', minimum: 0, maximum: 1 }],
            'x-hint': '`true`, `false` or a ratio from 0 to 1',
            description: 'Start a trace for a request that has none: `true`, `false` (default) or the ratio of such requests traced (`0.1`).',
          },
          clientSampling: {
            oneOf: [{ type: 'boolean' }, { type: 'number', minimum: 0, maximum: 1 }],
            'x-hint': '`true`, `false` or a ratio from 0 to 1',
            description: "Honour a client's sampled `traceparent`: `true` (default), `false` (never trace on the client's word) or a ratio.",
          },
          serviceName: { type: 'string', minLength: 1, description: 'The `service.name` resource attribute. Default `switchyard`.' },
          resourceAttributes: {
            type: 'object',
            description: 'More resource attributes of every span (`deployment.environment.name: prod`).',
            additionalProperties: { type: ['string', 'number', 'boolean'] },
          },
          captureMessageContent: {
            type: 'boolean',
            description:
              'Record prompts and completions on GenAI spans (`gen_ai.input.messages`, `gen_ai.output.messages`). Default `false` (or `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`): content may hold personal data.',
          },
          tls: {
            type: 'object',
            description:
              'TLS to an `https://` trace endpoint (both protocols), named as `backendTLS` names it: a private CA, a client certificate (mutual TLS), the name checked. Files are read when the config loads; relative paths resolve against the gateway\'s working directory. A file left out is taken from `OTEL_EXPORTER_OTLP_(TRACES_)CERTIFICATE`, `_CLIENT_CERTIFICATE`, `_CLIENT_KEY`.',
            properties: {
              root: { type: 'string', minLength: 1, description: "Path to a PEM CA bundle that verifies the collector's certificate, replacing the system roots." },
              cert: { type: 'string', minLength: 1, description: 'Path to the PEM client certificate (chain) presented to the collector. Needs `key`.' },
              key: { type: 'string', minLength: 1, description: 'Path to the PEM private key of `cert`. Needs `cert`.' },
              hostname: { type: 'string', minLength: 1, description: "Name sent as SNI and checked against the collector's certificate. Default: the endpoint's host." },
              insecure: { type: 'boolean', description: "Skip all verification of the collector's certificate (chain and name). For testing only." },
            },
            additionalProperties: false,
          },
        },
        additionalProperties: false,
      },
      plugins: {
        type: 'array',
        description: 'Third-party plugin modules to load: package names or paths relative to this file.',
        items: { type: 'string', minLength: 1 },
      },
      drainTimeout: {
        $ref: '#/$defs/duration',
        description:
          'How long shutdown waits for in-flight requests before closing connections. Default `10s`, or `TERMINATION_GRACE_PERIOD_SECONDS` less 5 s (less 1 s when 10 or less) when that variable is set.',
      },
      connectionTerminationDeadline: {
        $ref: '#/$defs/duration',
        description: "The reference gateway's name for `drainTimeout`. Give one of the two.",
      },
      defaultTimeouts: {
        type: 'object',
        description:
          'Deadlines for upstream calls of routes and backends without a `timeout` policy (a `timeout` policy replaces them). `0s` turns one off. Applied on reload too. Plugins may add their own (the `ai` backend: `llmBackendRequestTimeout`).',
        properties: {
          backendRequestTimeout: {
            $ref: '#/$defs/duration',
            description: 'How long an upstream may take to start answering (response headers), per attempt; then 504. Default `15s`.',
          },
          streamIdleTimeout: {
            $ref: '#/$defs/duration',
            description: 'Longest silence inside a response body (SSE, LLM streams, downloads) before it is cut. Default `5m`.',
          },
        },
        additionalProperties: false,
      },
      mergeSlashes: {
        type: 'boolean',
        description:
          'Merge repeated slashes in request paths (`/a//b` \u2192 `/a/b`) before routes are chosen; the upstream receives the merged path. Default true. Applies on reload.',
      },
      escapedSlashes: {
        enum: ['reject', 'keep'],
        description:
          'Request paths containing `%2F` or `%5C` (an encoded `/` or `\\`): `reject` answers 400 (default); `keep` forwards them escaped and never treats them as a path separator when matching. Applies on reload.',
      },
      trustedProxies: {
        type: 'array',
        description:
          'Addresses or CIDR ranges (`10.0.0.0/8`, `::1`) of proxies in front of the gateway. Only from these peers are `X-Forwarded-For`, `X-Real-IP` and `Forwarded` kept, and the client (`source.address`) is the right-most `X-Forwarded-For` address that is not a trusted proxy; from any other peer those headers are dropped and the peer is the client. Default: none. Applies on reload.',
        items: { type: 'string', minLength: 1 },
      },
      upgradeProtocols: {
        type: 'array',
        description:
          'HTTP/1.1 upgrade protocols relayed to backends (the `Upgrade` names, compared without regard to case). Default `[websocket]`. An upgrade offering any other protocol gets 403 and goes nowhere; `h2c` is never relayed (served as a plain request). Applies on reload (ADR 0118).',
        items: { type: 'string', pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$", 'x-hint': 'a protocol name such as `websocket`' },
      },
      headerTimeout: {
        $ref: '#/$defs/duration',
        description: 'How long a client may take to send the request line and headers before it gets 408 and the connection is closed. Default `60s`.',
      },
      maxConnectionsPerBind: {
        type: 'integer',
        minimum: 1,
        description: 'Most open client connections per bind port (with `workers`, per worker thread); connections beyond it are closed at once. Default: half the process\'s open-file limit (`ulimit -n`), divided among the workers (ADR 0143); no cap where the limit cannot be read (not Linux).',
      },
      workers: {
        oneOf: [
          { const: 'auto', description: 'One worker per CPU the process may use: `os.availableParallelism()`, capped by its cgroup CPU quota (a container `--cpus`, a Kubernetes `limits.cpu`), rounded up.' },
          { type: 'integer', minimum: 1, maximum: 64, description: 'This many workers.' },
        ],
        'x-hint': '`auto` or a whole number from 1 to 64',
        description:
          'Worker threads serving every bind (docs/deploy.md "Workers"): each accepts its own connections on the same ports (`SO_REUSEPORT`); a supervisor restarts a crashed one, reloads all together and answers the admin endpoints for all. Default 1 (one thread, no supervisor). Needs a restart to change.',
      },
      workerThreads: {
        type: 'integer',
        minimum: 1,
        maximum: 64,
        description: 'The reference gateway\'s name for `workers` (a number of workers). Give one of the two.',
      },
    },
    additionalProperties: false,
  },
  bind: {
    type: 'object',
    description: 'A port the gateway listens on: on every interface, or on `address`.',
    properties: {
      port: { type: 'integer', minimum: 0, maximum: 65535, description: 'TCP port.' },
      address: {
        type: 'string',
        minLength: 1,
        'x-hint': 'an IP address such as `127.0.0.1` or `::1`',
        description:
          'Switchyard extension: the local address to listen on, for example `127.0.0.1` so that only this machine can connect. Default: every interface (`::`, or `0.0.0.0` where IPv6 is off).',
      },
      listeners: { type: 'array', items: { $ref: '#/$defs/listener' }, description: 'Listeners sharing this port, told apart by hostname.' },
    },
    required: ['port', 'listeners'],
    additionalProperties: false,
  },
  listener: {
    type: 'object',
    description: 'A set of routes served on a bind, optionally for one hostname.',
    properties: {
      name: { type: 'string', minLength: 1, description: 'Name used in logs and metrics. Default `listener<index>`.' },
      hostname: {
        type: 'string',
        pattern: '^(\\*\\.)?[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*$',
        'x-hint': 'a hostname, or `*.` followed by a domain',
        description: 'Serve only this Host: exact, or `*.example.com` for any subdomain. Omitted: any host.',
      },
      protocol: { enum: ['HTTP', 'HTTPS'], description: 'Default `HTTP`: HTTP/1.1, and HTTP/2 with prior knowledge (h2c). `HTTPS` needs `tls`: HTTP/1.1 and HTTP/2 by ALPN.' },
      tls: {
        type: 'object',
        description: 'Server certificate for `HTTPS` listeners.',
        properties: {
          cert: { type: 'string', minLength: 1, description: 'Path to the PEM certificate chain.' },
          key: { type: 'string', minLength: 1, description: 'Path to the PEM private key.' },
          root: {
            type: 'string',
            minLength: 1,
            description:
              'Path to a PEM CA bundle: clients must present a certificate it verifies (mutual TLS); others get no answer. CEL sees the verified certificate as `source.subjectCn`, `source.spiffeId`, ... (docs/cel.md).',
          },
          minTLSVersion: {
            type: ['string', 'number'],
            description: 'Lowest TLS version accepted: `TLS_V1_2` (default) or `TLS_V1_3`. The HTTPS listeners of one port must agree (ADR 0140).',
          },
          maxTLSVersion: {
            type: ['string', 'number'],
            description: 'Highest TLS version accepted: `TLS_V1_3` (default) or `TLS_V1_2`. The HTTPS listeners of one port must agree.',
          },
          cipherSuites: {
            type: 'array',
            minItems: 1,
            items: { type: 'string', minLength: 1 },
            description:
              "The only cipher suites negotiated, most preferred first: IANA names (`TLS_AES_128_GCM_SHA256`, `TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256`) or OpenSSL's (`ECDHE-RSA-AES256-GCM-SHA384`); forward-secret AEAD suites only. Without a TLS 1.3 suite only TLS 1.2 is spoken, without a TLS 1.2 suite only TLS 1.3. Default: node:tls's list. The HTTPS listeners of one port must agree.",
          },
        },
        required: ['cert', 'key'],
        additionalProperties: false,
      },
      routes: { type: 'array', items: { $ref: '#/$defs/route' }, description: 'Routes, tried in order; the first match wins.' },
    },
    required: ['routes'],
    additionalProperties: false,
  },
  route: {
    type: 'object',
    description: 'Which requests a route takes, what happens to them, and where they go.',
    properties: {
      name: { type: 'string', minLength: 1, description: 'Name used in logs, traces and metrics. Default `route<index>`.' },
      namespace: { type: 'string', description: 'Namespace when a control plane manages the gateway; omit locally.' },
      ruleName: { type: 'string', description: 'Rule identifier used by a control plane; omit locally.' },
      hostnames: {
        type: 'array',
        description: 'Extra Host constraints (exact or `*.domain`); both listener and route hostnames must match.',
        items: { type: 'string', pattern: '^(\\*\\.)?[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*$', 'x-hint': 'a hostname or `*.domain`' },
      },
      matches: {
        type: 'array',
        description: 'Match objects; any one qualifies the route. Omitted: every request matches.',
        items: { $ref: '#/$defs/match' },
      },
      policies: { 'x-slot': 'routePolicies', description: 'Route policies, all optional.' },
      backends: { type: 'array', items: { $ref: '#/$defs/backendRef' }, description: 'Where requests go; one is picked by weight.' },
    },
    additionalProperties: false,
  },
  match: {
    type: 'object',
    description: 'Conditions that must all hold.',
    properties: {
      method: { type: 'string', pattern: '^[A-Za-z]+$', description: 'HTTP method, for example GET.' },
      path: {
        type: 'object',
        description: 'Exactly one of `exact`, `pathPrefix` (segment-aware), `regex` (whole path).',
        properties: {
          exact: { type: 'string', description: 'The path equals this.' },
          pathPrefix: { type: 'string', description: 'The path is this prefix or continues it at a `/`.' },
          regex: { type: 'string', format: 'regex', description: 'The whole path matches this regular expression.' },
        },
        additionalProperties: false,
        exactlyOneOf: ['exact', 'pathPrefix', 'regex'],
      },
      // Matching on a credential (`authorization`, `api_key`) keeps the value out of `/config_dump` (ADR 0017).
      headers: { type: 'array', items: nameMatch('header'), 'x-secret': 'headers', description: 'Headers that must be present and match.' },
      query: { type: 'array', items: nameMatch('query parameter'), 'x-secret': 'headers', description: 'Query parameters that must be present and match.' },
    },
    additionalProperties: false,
  },
  backendRef: {
    'x-slot': 'backend',
    description: 'A backend: exactly one kind key, plus optional `weight` and `policies`.',
    properties: {
      weight: { type: 'integer', minimum: 0, description: 'Relative share of requests. Default 1.' },
      policies: { 'x-slot': 'backendPolicies', description: 'Policies for this backend on this route.' },
    },
  },
  frontendPolicies: FRONTEND_POLICIES_SCHEMA,
  namedBackend: {
    'x-slot': 'backend',
    'x-slot-filter': 'named',
    description: 'A named backend, referenced from routes as `backend: <name>`.',
    properties: {
      name: { type: 'string', minLength: 1, description: 'Unique name.' },
      policies: { 'x-slot': 'backendPolicies', description: 'Policies applied wherever this backend is used (TLS, auth, \u2026).' },
    },
    required: ['name'],
  },
};

/** The root of the config document. */
export const ROOT_SCHEMA: JsonSchema = {
  type: 'object',
  description: 'A Switchyard configuration.',
  properties: {
    config: { $ref: '#/$defs/staticConfig' },
    frontendPolicies: { $ref: '#/$defs/frontendPolicies' },
    binds: { type: 'array', items: { $ref: '#/$defs/bind' }, description: 'Ports and what they serve.' },
    backends: { type: 'array', items: { $ref: '#/$defs/namedBackend' }, description: 'Named backends.' },
  },
  additionalProperties: false,
};
