/**
 * The `initialize` revisions (2024-11-05 ... 2025-11-25): a handshake opens a session whose id travels in a header.
 * This folder serves all of them, named for the newest.
 */

/**
 * The revisions with the `initialize` handshake, newest first as the MCP SDK lists them (its public
 * `SUPPORTED_PROTOCOL_VERSIONS`; test/mcp/protocol-constants.test.ts keeps the two equal). Spelled out here rather
 * than imported: the SDK's v2 packages export the list only from `@modelcontextprotocol/core/internal` (not a public
 * entry) or from the whole client (about 75 ms and 6 MiB to load for a list of five dates).
 */
export const INITIALIZE_VERSIONS: readonly string[] = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'];
/** The newest of them: what the gateway offers such targets it initializes for 2026-07-28 clients. */
export const LATEST_INITIALIZE_VERSION = [...INITIALIZE_VERSIONS].sort().at(-1)!;
