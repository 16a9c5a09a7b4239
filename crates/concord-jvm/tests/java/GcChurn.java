// Allocates short- and medium-lived byte arrays in rounds, calls System.gc() after each round,
// and prints a checksum of what it kept: its stdout must not change under the agent.
public class GcChurn {
    public static void main(String[] args) {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 10;
        long checksum = 0;
        Object[] keep = new Object[4096];
        for (int r = 0; r < rounds; r++) {
            for (int i = 0; i < 300_000; i++) {
                byte[] b = new byte[32 + (i % 200)];
                b[b.length - 1] = (byte) (i * 31 + r);
                if (i % 64 == 0) {
                    keep[(i / 64) % keep.length] = b;
                }
            }
            for (Object o : keep) {
                byte[] b = (byte[]) o;
                if (b != null) {
                    checksum = checksum * 1_000_003 + b.length + b[b.length - 1];
                }
            }
            System.gc();
            System.out.println("round " + r + " checksum " + checksum);
        }
        System.out.println("done " + checksum);
    }
}
