// The floor, live: the server sends the floor's HTML (rendered and escaped there) as a
// server-sent event each time it changes; this swaps it in. No library, no build step.
(function () {
  var floor = document.getElementById("floor");
  var state = document.getElementById("live-state");
  if (!floor || !window.EventSource) { return; }
  var source = new EventSource(floor.dataset.stream);
  source.addEventListener("open", function () { state.textContent = "connected"; });
  source.addEventListener("floor", function (event) {
    floor.innerHTML = event.data;
    state.textContent = "updated " + new Date().toLocaleTimeString();
  });
  source.addEventListener("expired", function () {
    source.close();
    state.textContent = "session expired: log in again";
  });
  source.addEventListener("error", function () { state.textContent = "reconnecting"; });
}());
