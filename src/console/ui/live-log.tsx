import { useEffect, useRef, useState } from 'preact/hooks';
import { LogBuffer, logsQuery } from '../model/log-stream.js';
import { authGate } from './auth-gate.js';
import { SignInNeeded, streamText } from './console-api.js';

const keptLines = 2000;
const backlogLines = 200;

type LogStatus = 'connecting' | 'live' | 'paused' | 'retrying';

/**
 * An instance's live log (`GET /v1/logs?follow=true`): the last 200 lines, then every line as the
 * container prints it, across restarts and moves (the server follows the instance). The view
 * sticks to the bottom unless the reader scrolled up; "pause" ends the stream, "resume" opens a
 * new one from the lines printed meanwhile.
 */
export function LiveLog({ app, index }: { readonly app: string; readonly index: number }) {
  const [status, setStatus] = useState<LogStatus>('connecting');
  const [error, setError] = useState('');
  const [timestamps, setTimestamps] = useState(false);
  const [, setVersion] = useState(0);
  const buffer = useRef(new LogBuffer(keptLines));
  const box = useRef<HTMLDivElement>(null);
  const stuck = useRef(true);
  const paused = status === 'paused';

  useEffect(() => {
    if (paused) return;
    buffer.current = new LogBuffer(keptLines);
    setVersion((v) => v + 1);
    const abort = new AbortController();
    let frame = 0;
    const redraw = () => {
      if (frame) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        setVersion((v) => v + 1);
      });
    };
    void (async () => {
      let delayMs = 1000;
      while (!abort.signal.aborted) {
        try {
          setStatus('connecting');
          const tail = buffer.current.entries.length === 0 ? backlogLines : 0;
          await streamText(
            logsQuery({ app, index, tail, follow: true }),
            (text) => {
              setStatus('live');
              setError('');
              delayMs = 1000;
              if (buffer.current.feed(text)) redraw();
            },
            abort.signal,
          );
        } catch (err) {
          if (abort.signal.aborted) return;
          if (err instanceof SignInNeeded) {
            authGate.require(err.message);
            return;
          }
          setError(err instanceof Error ? err.message : String(err));
        }
        if (abort.signal.aborted) return;
        setStatus('retrying');
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        delayMs = Math.min(delayMs * 2, 15_000);
      }
    })();
    return () => {
      abort.abort();
      if (frame) cancelAnimationFrame(frame);
    };
  }, [app, index, paused]);

  useEffect(() => {
    const el = box.current;
    if (el && stuck.current) el.scrollTop = el.scrollHeight;
  });

  const entries = buffer.current.entries;
  return (
    <div class="live-log">
      <div class="toolbar">
        <span class={`feed feed-${status === 'live' ? 'live' : 'connecting'}`} id="log-status" role="status">
          {status === 'live'
            ? '● following'
            : status === 'paused'
              ? '❚❚ paused'
              : status === 'retrying'
                ? '○ reconnecting'
                : '○ connecting'}
        </span>
        <button type="button" id="log-pause" onClick={() => setStatus(paused ? 'connecting' : 'paused')}>
          {paused ? 'resume' : 'pause'}
        </button>
        <label>
          <input
            type="checkbox"
            checked={timestamps}
            onChange={(e) => setTimestamps(e.currentTarget.checked)}
          />{' '}
          timestamps
        </label>
        {buffer.current.dropped > 0 ? (
          <span class="muted">{buffer.current.dropped} older lines let go</span>
        ) : null}
      </div>
      {error ? <p class="reason">{error}</p> : null}
      <div
        class="log-lines"
        id="log-lines"
        ref={box}
        role="log"
        aria-live="off"
        aria-label={`log of ${app} #${index}`}
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region takes focus so the keyboard can scroll it
        tabIndex={0}
        onScroll={(e) => {
          const el = e.currentTarget;
          stuck.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {entries.length === 0 ? <p class="muted">{status === 'live' ? 'No output yet.' : '…'}</p> : null}
        {entries.map((entry) => (
          <div
            key={entry.seq}
            class={`log-line${entry.kind === 'error' ? ' log-error' : entry.stream === 'stderr' ? ' log-stderr' : ''}`}
          >
            {timestamps ? <span class="log-ts">{entry.ts} </span> : null}
            <span class="log-source">[{entry.source}]</span> {entry.text}
          </div>
        ))}
      </div>
    </div>
  );
}
