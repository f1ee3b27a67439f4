import { useEffect, useRef, useState } from 'preact/hooks';
import { authGate } from './auth-gate.js';
import { SignInNeeded } from './console-api.js';

export type Resource<T> =
  | { readonly kind: 'loading' }
  | { readonly kind: 'ready'; readonly value: T }
  | { readonly kind: 'error'; readonly message: string; readonly signIn: boolean };

/**
 * Reads something the event stream does not carry (a system's tree, a container's history) and
 * reads it again when `trigger` changes — the feed's version, so it follows the cluster's events —
 * at most once per `minGapMs`, keeping the last value on screen while it reloads. `everyMs` adds
 * a timer for what the stream cannot tell (a model unit's life moves without a BBS event).
 */
export function useResource<T>(
  load: () => Promise<T>,
  key: string,
  trigger: number,
  minGapMs = 1000,
  /** Also read again this often: for what changes without any event on the stream. */
  everyMs?: number,
): Resource<T> {
  const [state, setState] = useState<Resource<T>>({ kind: 'loading' });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (everyMs === undefined) return;
    const timer = setInterval(() => setTick((n) => n + 1), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
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
  }, [key, trigger, tick]);
  return state;
}
