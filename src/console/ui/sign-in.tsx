import { useEffect, useRef, useState } from 'preact/hooks';
import { token } from './console-api.js';

/**
 * Asks for an API token over the current page (a modal dialog: focus moves into it and Escape
 * does not dismiss it, since nothing works without a token). The page underneath stays mounted.
 */
export function SignIn(props: { readonly reason: string; readonly onToken: () => void }) {
  const [value, setValue] = useState('');
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  return (
    <div class="overlay">
      <form
        class="sign-in"
        id="sign-in"
        role="dialog"
        aria-modal="true"
        aria-labelledby="sign-in-title"
        onSubmit={(e) => {
          e.preventDefault();
          token.set(value);
          props.onToken();
        }}
      >
        <h2 id="sign-in-title">Sign in to berth</h2>
        <p id="sign-in-reason">{props.reason}</p>
        <label for="token">API token</label>
        <input
          id="token"
          ref={input}
          type="password"
          autocomplete="off"
          value={value}
          onInput={(e) => setValue((e.target as HTMLInputElement).value)}
        />
        <p class="muted">
          `berth up` and `berth server` print an admin token; `berth token create` makes others.
        </p>
        <button type="submit" disabled={value.trim() === ''}>
          Sign in
        </button>
      </form>
    </div>
  );
}
