package rsbecho;

import rsbecho.ICallback;

interface IEcho {
    String echo(String msg);
    // Calls cb.ping(msg) from the service and returns what it answered.
    String callBack(ICallback cb, String msg);
    int getPid();
}
