/** The argument of a thread checking a paste for the admin UI's validator (paste-check.ts, ADR 0172); the entry (kernel/boot/dist-entry.ts) recognises it. */
export const PASTE_CHECK_ARG = '--switchyard-paste-check';
