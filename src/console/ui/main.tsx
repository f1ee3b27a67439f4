import { render } from 'preact';
import { App } from './app.js';
import { adoptTokenFromFragment } from './console-api.js';

adoptTokenFromFragment();
const root = document.getElementById('app');
// The boot message is static HTML, not Preact's: clear it rather than diff against it.
if (root) {
  root.replaceChildren();
  render(<App />, root);
}
