import { useEffect, useRef, useState } from 'preact/hooks';
import {
  decodeExecFrame,
  encodeExecFrame,
  execChannels,
  execSocketUrl,
  resizeFrame,
} from '../model/exec-frames.js';
import { authGate } from './auth-gate.js';
import { ApiError, SignInNeeded, startExec } from './console-api.js';

type TerminalState =
  | { readonly kind: 'closed' }
  | { readonly kind: 'opening' }
  | { readonly kind: 'open'; readonly instance: string }
  | { readonly kind: 'exited'; readonly code: number }
  | { readonly kind: 'failed'; readonly message: string };

/** Splits a typed command line on blanks: the exec takes argv, and the shell is the way to pipes. */
function argvOf(line: string): string[] {
  return line
    .trim()
    .split(/\s+/)
    .filter((word) => word !== '');
}

/**
 * A terminal in the browser into one running instance (`berth exec -t`): xterm.js over the exec
 * WebSocket. The terminal library is loaded only when a terminal opens, so the console's first
 * paint does not carry it. The server records each exec in the container's history with the user.
 */
export function ExecTerminal({ app, index }: { readonly app: string; readonly index: number }) {
  const [command, setCommand] = useState('/bin/sh');
  const [state, setState] = useState<TerminalState>({ kind: 'closed' });
  const host = useRef<HTMLElement>(null);
  const session = useRef<{ close: () => void } | undefined>(undefined);

  useEffect(() => () => session.current?.close(), []);

  const open = async () => {
    const argv = argvOf(command);
    if (argv.length === 0 || !host.current) return;
    session.current?.close();
    setState({ kind: 'opening' });
    const [{ Terminal }, { FitAddon }] = await Promise.all([
      import('@xterm/xterm'),
      import('@xterm/addon-fit'),
    ]);
    const element = host.current;
    element.replaceChildren();
    const terminal = new Terminal({ convertEol: false, cursorBlink: true, fontSize: 13, scrollback: 5000 });
    const fit = new FitAddon();
    terminal.loadAddon(fit);
    terminal.open(element);
    fit.fit();
    let socket: WebSocket | undefined;
    const observer = new ResizeObserver(() => fit.fit());
    const close = () => {
      observer.disconnect();
      socket?.close();
    };
    session.current = { close };
    try {
      const ticket = await startExec({ app, index, command: argv, cols: terminal.cols, rows: terminal.rows });
      socket = new WebSocket(execSocketUrl(location.href, ticket.path));
      socket.binaryType = 'arraybuffer';
      const live = socket;
      live.onopen = () => {
        setState({ kind: 'open', instance: ticket.instance });
        observer.observe(element);
        terminal.focus();
      };
      live.onmessage = (message) => {
        if (!(message.data instanceof ArrayBuffer)) return;
        const output = decodeExecFrame(new Uint8Array(message.data));
        if (output.kind === 'output') terminal.write(output.bytes);
        else if (output.kind === 'exit') {
          terminal.write(`\r\n[exited with code ${output.code}]\r\n`);
          setState({ kind: 'exited', code: output.code });
          close();
        } else if (output.kind === 'error') {
          terminal.write(`\r\n[${output.message}]\r\n`);
          setState({ kind: 'failed', message: output.message });
          close();
        }
      };
      live.onclose = () =>
        setState((s) =>
          s.kind === 'open' || s.kind === 'opening'
            ? { kind: 'failed', message: 'The connection closed.' }
            : s,
        );
      terminal.onData((data) => {
        if (live.readyState === WebSocket.OPEN) live.send(encodeExecFrame(execChannels.stdin, data));
      });
      terminal.onResize(({ cols, rows }) => {
        if (live.readyState === WebSocket.OPEN) live.send(resizeFrame(cols, rows));
      });
    } catch (err) {
      close();
      if (err instanceof SignInNeeded) authGate.require(err.message);
      const message = err instanceof ApiError || err instanceof Error ? err.message : String(err);
      terminal.write(`[${message}]\r\n`);
      setState({ kind: 'failed', message });
    }
  };

  const running = state.kind === 'open' || state.kind === 'opening';
  return (
    <div class="exec">
      <form
        class="toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          void open();
        }}
      >
        <label>
          command{' '}
          <input
            id="exec-command"
            value={command}
            onInput={(e) => setCommand(e.currentTarget.value)}
            disabled={running}
            spellcheck={false}
          />
        </label>
        {running ? (
          <button type="button" id="exec-close" onClick={() => session.current?.close()}>
            close
          </button>
        ) : (
          <button type="submit" id="exec-open" disabled={argvOf(command).length === 0}>
            open terminal
          </button>
        )}
        <span class="muted" id="exec-state" role="status">
          {state.kind === 'open'
            ? `connected to ${state.instance}`
            : state.kind === 'opening'
              ? 'connecting…'
              : state.kind === 'exited'
                ? `exited with code ${state.code}`
                : state.kind === 'failed'
                  ? state.message
                  : 'Runs the command in this instance with a terminal; recorded in its history.'}
        </span>
      </form>
      <section class="terminal" id="exec-terminal" ref={host} aria-label={`terminal into ${app} #${index}`} />
    </div>
  );
}
