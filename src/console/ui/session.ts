import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Principal } from './console-api.js';

export interface Session {
  readonly principal: Principal;
  /** Operators and admins act; viewers see everything and no action buttons. */
  readonly canAct: boolean;
}

export const SessionContext = createContext<Session>({
  principal: { user: '', role: 'viewer' },
  canAct: false,
});

export function useSession(): Session {
  return useContext(SessionContext);
}

export function sessionOf(principal: Principal): Session {
  return { principal, canAct: principal.role === 'operator' || principal.role === 'admin' };
}
