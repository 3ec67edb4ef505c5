package rsbecho;

// A binder object the client passes to the service, which calls it back.
interface ICallback {
    String ping(String msg);
}
