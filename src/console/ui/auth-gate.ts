import { useEffect, useState } from 'preact/hooks';

/**
 * The one place that knows the console must ask for a token: any 401 (a list, the event stream,
 * an action) opens the sign-in over the current page instead of replacing it, so what was typed
 * and where the user was survive the new token.
 */
class AuthGate {
  reason = '';
  #listeners = new Set<() => void>();

  require(reason: string): void {
    this.reason = reason;
    for (const listener of this.#listeners) listener();
  }

  clear(): void {
    this.reason = '';
    for (const listener of this.#listeners) listener();
  }

  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

export const authGate = new AuthGate();

export function useAuthGate(): string {
  const [, setTick] = useState(0);
  useEffect(() => authGate.subscribe(() => setTick((n) => n + 1)), []);
  return authGate.reason;
}
