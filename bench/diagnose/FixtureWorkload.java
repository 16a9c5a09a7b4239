// The program whose GC logs are the fixtures under
// crates/concord-cli/tests/fixtures/diagnose/real/jdk17 and .../jdk25 (see make_fixtures.sh).
//
// Allocation churn on a retained set that grows to about half of a 64 MB heap and shrinks
// again, in waves, so that every collector writes young, mixed or old, and full collections;
// one System.gc() half way through adds an explicit collection. It runs for SECONDS seconds
// (first argument, default 3) and prints a checksum so nothing is optimized away.
import java.util.ArrayList;
import java.util.Random;

public class FixtureWorkload {
    public static void main(String[] args) {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 3.0;
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long half = System.nanoTime() + (long) (seconds * 0.5e9);
        Random random = new Random(42);
        ArrayList<byte[]> retained = new ArrayList<>();
        long retainedBytes = 0;
        // The retained set's target: rises to 28 MB and falls back to 2 MB, in waves.
        long target = 2L << 20;
        long step = 1L << 20;
        boolean explicit = false;
        long checksum = 0;
        long iteration = 0;
        while (System.nanoTime() < end) {
            // Short-lived garbage: 50 arrays of 1-16 KiB, plus now and then a 512 KiB one
            // (humongous for G1's small regions, straight to old for the others).
            for (int i = 0; i < 50; i++) {
                byte[] garbage = new byte[1024 + random.nextInt(15 * 1024)];
                checksum += garbage.length;
            }
            if (iteration % 200 == 0) {
                byte[] big = new byte[512 * 1024];
                checksum += big.length;
            }
            // The retained set follows its target, replacing a random part as it goes so the
            // old generation gets holes.
            if (retainedBytes < target) {
                for (int k = 0; k < 3; k++) {
                    byte[] kept = new byte[4096 + random.nextInt(60 * 1024)];
                    retained.add(kept);
                    retainedBytes += kept.length;
                }
            } else if (retainedBytes > target + (1L << 20)) {
                byte[] gone = retained.remove(retained.size() - 1);
                retainedBytes -= gone.length;
            } else if (!retained.isEmpty()) {
                int at = random.nextInt(retained.size());
                byte[] replacement = new byte[4096 + random.nextInt(60 * 1024)];
                retainedBytes += replacement.length - retained.get(at).length;
                retained.set(at, replacement);
            }
            if (iteration % 20 == 0) {
                target += step;
                if (target > (28L << 20) || target < (2L << 20)) {
                    step = -step;
                    target += 2 * step;
                }
            }
            if (!explicit && System.nanoTime() > half) {
                System.gc();
                explicit = true;
            }
            iteration++;
            // About 1 ms per iteration: some 400 MB of garbage a second instead of gigabytes,
            // so a run of a few seconds writes tens to hundreds of collections, not thousands.
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                break;
            }
        }
        System.out.println("checksum " + checksum + " retained " + retainedBytes);
    }
}
