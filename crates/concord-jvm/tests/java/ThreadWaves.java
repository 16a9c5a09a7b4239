// Starts waves of short-lived worker threads that each burn a little CPU on allocation, so the
// set of live Java threads keeps changing (001's scalable case); prints a checksum.
public class ThreadWaves {
    public static void main(String[] args) throws Exception {
        int waves = args.length > 0 ? Integer.parseInt(args[0]) : 10;
        long[] sums = new long[4];
        for (int w = 0; w < waves; w++) {
            Thread[] threads = new Thread[4];
            for (int t = 0; t < threads.length; t++) {
                final int slot = t;
                final int wave = w;
                threads[t] = new Thread(() -> {
                    long s = 0;
                    for (int i = 0; i < 200_000; i++) {
                        byte[] b = new byte[16 + (i % 64)];
                        b[0] = (byte) (i + wave);
                        s += b[0];
                    }
                    sums[slot] += s;
                }, "wave-" + w + "-" + t);
                threads[t].start();
            }
            for (Thread t : threads) {
                t.join();
            }
            Thread.sleep(30);
        }
        long total = 0;
        for (long s : sums) {
            total += s;
        }
        System.out.println("checksum " + total);
    }
}
