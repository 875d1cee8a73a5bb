// In-app navigation without a reload; app.js installs the router.
let router = () => {};

export function setRouter(fn) { router = fn; }

export function navigate(href) {
  history.pushState(null, '', href);
  router();
  document.getElementById('main').focus();
}
