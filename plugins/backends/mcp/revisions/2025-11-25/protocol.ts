/**
 * The `initialize` revisions (2024-11-05 … 2025-11-25): a handshake opens a session whose id travels in a header.
 * This folder serves all of them, named for the newest.
 */
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/core/internal';

/** The revisions with the `initialize` handshake, oldest first as the SDK lists them. */
export const INITIALIZE_VERSIONS: readonly string[] = [...SUPPORTED_PROTOCOL_VERSIONS];
/** The newest of them: what the gateway offers such targets it initializes for 2026-07-28 clients. */
export const LATEST_INITIALIZE_VERSION = [...SUPPORTED_PROTOCOL_VERSIONS].sort().at(-1)!;
