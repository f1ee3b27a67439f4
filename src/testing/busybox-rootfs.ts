// Tests make their images from Debian's busybox-static, as `berth up` does for its example.
export { busyboxBinary, makeBusyboxRootfs } from '../runtime/busybox-rootfs.js';
