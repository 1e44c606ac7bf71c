import { defineAttribute } from 'switchyard/sdk';

/** What the `a2a` policy learnt about a request; set once, so `a2a` on both a route and its backend acts once. */
export interface A2aRequest {
  /** `card`: an agent-card fetch; `call`: an A2A operation (`method` says which); `other`: anything else. */
  readonly kind: 'card' | 'call' | 'other';
  /** The A2A method (`SendMessage`, `message/send`, `GetTask`, ...); `unknown` for a call it could not name. */
  readonly method?: string;
  /** Set once a response hook handled the reply. */
  responded: boolean;
}

/** The classification of the request, for later policies (an authorization rule on the A2A method, say). */
export const a2aRequestAttribute = defineAttribute<A2aRequest>('a2a');
