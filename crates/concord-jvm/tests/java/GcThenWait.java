// Runs N collections (System.gc() plus allocation), starts a waiting thread named "waiter"
// and waits until it runs, prints "ready", then each line read from stdin: "gc" collects once more and prints "gc-done";
// end of input ends the program. Lets a test look at /proc while the JVM is alive.
import java.io.BufferedReader;
import java.io.InputStreamReader;

public class GcThenWait {
    static volatile Object sink;

    static void collect() {
        for (int i = 0; i < 100_000; i++) {
            sink = new byte[64];
        }
        System.gc();
    }

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        for (int r = 0; r < rounds; r++) {
            collect();
        }
        Object lock = new Object();
        java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(1);
        Thread waiter = new Thread(() -> {
            started.countDown();
            synchronized (lock) {
                try {
                    lock.wait();
                } catch (InterruptedException e) {
                    // end
                }
            }
        }, "waiter");
        waiter.setDaemon(true);
        waiter.start();
        // Its ThreadStart event has run by now (it precedes run()).
        started.await();
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().equals("gc")) {
                collect();
                System.out.println("gc-done");
                System.out.flush();
            }
        }
        System.out.println("bye");
    }
}
