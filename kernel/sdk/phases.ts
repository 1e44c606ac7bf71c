/**
 * The fixed request pipeline. Each policy declares one phase; inside a phase the manifest's numeric
 * `order` decides, never the order of keys in the YAML file. See docs/phases.md.
 */
export const Phase = {
  /** CORS preflights: answered before any authentication. */
  ingress: 100,
  /** Who is calling: jwtAuth, mcpAuthentication, basicAuth, apiKey. */
  authn: 200,
  /** May they: extAuthz, authorization. */
  authz: 300,
  /** Rate limits. */
  admission: 400,
  /** Request mutation: transformations, header modifiers, urlRewrite. */
  mutate: 500,
  /** Local replies: requestRedirect, directResponse. */
  respond: 600,
  /** Just before the backend: requestMirror. */
  dispatch: 700,
  /** Per upstream attempt: backendAuth, signing. */
  upstream: 900,
} as const;

/** Name of a request phase. */
export type PhaseName = keyof typeof Phase;

/** Phase names in pipeline order. */
export const PHASE_ORDER: readonly PhaseName[] = Object.keys(Phase) as PhaseName[];
