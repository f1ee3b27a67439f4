import { useEffect, useRef, useState } from 'preact/hooks';
import { authGate } from './auth-gate.js';
import { SignInNeeded } from './console-api.js';

export type Resource<T> =
  | { readonly kind: 'loading' }
  | { readonly kind: 'ready'; readonly value: T }
  | { readonly kind: 'error'; readonly message: string; readonly signIn: boolean };

/**
 * Reads something the cluster view does not hold (a system's tree, a container's history) and
 * reads it again when `trigger` changes — a count of the feed's events that concern it — at most
 * once per `minGapMs`, keeping the last value on screen while it reloads.
 */
export function useResource<T>(
  load: () => Promise<T>,
  key: string,
  trigger: number,
  minGapMs = 1000,
): Resource<T> {
  const [state, setState] = useState<Resource<T>>({ kind: 'loading' });
  const last = useRef({ key: '', at: 0, timer: undefined as ReturnType<typeof setTimeout> | undefined });
  useEffect(() => {
    let cancelled = false;
    const run = () => {
      last.current.at = Date.now();
      load().then(
        (value) => !cancelled && setState({ kind: 'ready', value }),
        (err: unknown) => {
          if (err instanceof SignInNeeded) authGate.require(err.message);
          if (!cancelled)
            setState({
              kind: 'error',
              message: err instanceof Error ? err.message : String(err),
              signIn: err instanceof SignInNeeded,
            });
        },
      );
    };
    const keyChanged = last.current.key !== key;
    last.current.key = key;
    if (keyChanged) setState({ kind: 'loading' });
    clearTimeout(last.current.timer);
    const wait = keyChanged ? 0 : Math.max(0, last.current.at + minGapMs - Date.now());
    last.current.timer = setTimeout(run, wait);
    return () => {
      cancelled = true;
      clearTimeout(last.current.timer);
    };
  }, [key, trigger]);
  return state;
}
