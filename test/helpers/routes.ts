/**
 * A route that answers 200 with its own name, so a response shows which route took the request. `extra` adds route
 * fields (matches, ...); its `policies` run alongside the directResponse.
 */
export const namedRoute = (name: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  name,
  ...extra,
  policies: { directResponse: { status: 200, body: name }, ...((extra.policies as object) ?? {}) },
});
