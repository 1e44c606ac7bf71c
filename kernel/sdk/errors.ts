/**
 * Every error code the gateway reports, in one place. Config errors and request errors both carry one.
 */
export const ErrorCode = {
  configSyntax: 'SWY_ERR_CONFIG_SYNTAX',
  configSchema: 'SWY_ERR_CONFIG_SCHEMA',
  configUnknownKey: 'SWY_ERR_CONFIG_UNKNOWN_KEY',
  configNotInstalled: 'SWY_ERR_CONFIG_NOT_INSTALLED',
  configEnv: 'SWY_ERR_CONFIG_ENV',
  configInvalid: 'SWY_ERR_CONFIG_INVALID',
  configIo: 'SWY_ERR_CONFIG_IO',
  /** Left unchecked by the admin UI's validator (a file, store or URL it does not touch, ADR 0131): a warning. */
  configUnchecked: 'SWY_ERR_CONFIG_UNCHECKED',
  /** A plugin's warning at load (`ctx.warn`), in the admin UI validator's answer (ADR 0131); logged otherwise. */
  configWarning: 'SWY_WARN_CONFIG',
  pluginDuplicate: 'SWY_ERR_PLUGIN_DUPLICATE',
  pluginVersion: 'SWY_ERR_PLUGIN_VERSION',
  pluginInvalid: 'SWY_ERR_PLUGIN_INVALID',
  pluginLoad: 'SWY_ERR_PLUGIN_LOAD',
  routeNotFound: 'SWY_ERR_ROUTE_NOT_FOUND',
  listenerNotFound: 'SWY_ERR_LISTENER_NOT_FOUND',
  misdirectedRequest: 'SWY_ERR_MISDIRECTED_REQUEST',
  noBackend: 'SWY_ERR_NO_BACKEND',
  upstreamUnavailable: 'SWY_ERR_UPSTREAM_UNAVAILABLE',
  upstreamFailed: 'SWY_ERR_UPSTREAM_FAILED',
  upstreamTimeout: 'SWY_ERR_UPSTREAM_TIMEOUT',
  requestTimeout: 'SWY_ERR_REQUEST_TIMEOUT',
  bodyTooLarge: 'SWY_ERR_BODY_TOO_LARGE',
  badRequest: 'SWY_ERR_BAD_REQUEST',
  internal: 'SWY_ERR_INTERNAL',
} as const;

export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];

/**
 * A failure that becomes an HTTP response. Throw it from a hook or a backend; the kernel turns it into a
 * JSON body `{"error":{"type","message"}}` with `status`, and the response hooks still run on it.
 */
export class GatewayError extends Error {
  readonly status: number;
  readonly type: string;
  readonly code: ErrorCodeValue;
  readonly headers: Record<string, string> | undefined;

  constructor(status: number, type: string, message: string, code: ErrorCodeValue = ErrorCode.internal, headers?: Record<string, string>) {
    super(message);
    this.name = 'GatewayError';
    this.status = status;
    this.type = type;
    this.code = code;
    this.headers = headers;
  }
}

/** Where in the user's config a problem is. `path` is the list of keys and indexes from the root. */
export interface ConfigIssue {
  readonly code: ErrorCodeValue;
  readonly path: readonly (string | number)[];
  readonly message: string;
  /** Point at the key itself rather than its value (unknown keys). */
  readonly atKey?: boolean;
  /** Where in the string value the problem is (0-based), for a value with its own syntax (a CEL expression). */
  readonly valueOffset?: number | undefined;
}

/**
 * One or more config problems. Plugins throw it (usually through `ctx.fail`) during `compile`; the kernel
 * adds file, line, column and a code frame before showing it.
 */
export class ConfigError extends Error {
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[] | ConfigIssue) {
    const list = Array.isArray(issues) ? issues : [issues as ConfigIssue];
    super(list.map((i) => i.message).join('\n'));
    this.name = 'ConfigError';
    this.issues = list;
  }
}
