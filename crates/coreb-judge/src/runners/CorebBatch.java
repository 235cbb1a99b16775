// coreb's batch runner for Java tests (`[stages.execute] batch = ["java"]`, the judge's
// `batch` module): the tests of one solution in one JVM, each with the solution's classes
// loaded anew by a class loader of its own (so its static fields start fresh), its own
// System.in, System.out and System.err, and `main` on a thread of the run command's stack size.
//
// Arguments: the solution's class directory, its main class, the stack size in bytes, the wall
// and CPU budgets of one test in ms, the output cap of one test and of all tests in bytes.
// stdin: the number of tests (int), then each test's input (int length, bytes).
// stdout, one frame a test, in order:
//   'K' cpu_ns (long) wall_ns (long) stdout (int length, bytes) stderr (the same)
//       main returned, within every budget;
//   'B' test (int) reason (UTF): anything else; the runner stops,
// and 'E' after the last test. The judge keeps the 'K' frames and runs every test from the
// first 'B' on (or from where the frames end) as a process of its own.
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.Charset;
import java.nio.file.Paths;

public final class CorebBatch {
    /** An output buffer that stops growing at its cap and remembers that it was reached. */
    static final class Capped extends ByteArrayOutputStream {
        private final int cap;
        boolean over;

        Capped(int cap) {
            this.cap = cap;
        }

        @Override
        public synchronized void write(int b) {
            if (count + 1 > cap) {
                over = true;
            } else {
                super.write(b);
            }
        }

        @Override
        public synchronized void write(byte[] b, int off, int len) {
            if (len > cap - count) {
                over = true;
            } else {
                super.write(b, off, len);
            }
        }
    }

    /**
     * A test's input as System.in: at most a pipe's capacity (64 KiB) a read, as a JVM of its
     * own reading the judge's pipe would get it.
     */
    static final class Piped extends ByteArrayInputStream {
        Piped(byte[] input) {
            super(input);
        }

        @Override
        public synchronized int read(byte[] b, int off, int len) {
            return super.read(b, off, Math.min(len, 1 << 16));
        }
    }

    /** The encoding System.out has in a JVM of its own (JDK 17: the default; 19+: stdout.encoding). */
    static String stdoutEncoding() {
        String enc = System.getProperty("stdout.encoding");
        if (enc == null) {
            enc = System.getProperty("sun.stdout.encoding");
        }
        return enc != null ? enc : Charset.defaultCharset().name();
    }

    public static void main(String[] args) throws Exception {
        URL[] path = {Paths.get(args[0]).toUri().toURL()};
        String mainClass = args[1];
        long stack = Long.parseLong(args[2]);
        long wallBudgetMs = Long.parseLong(args[3]);
        long cpuBudgetNs = Long.parseLong(args[4]) * 1_000_000L;
        int outputCap = Integer.parseInt(args[5]);
        long totalCap = Long.parseLong(args[6]);
        String encoding = stdoutEncoding();
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        DataInputStream in = new DataInputStream(
            new BufferedInputStream(new FileInputStream(FileDescriptor.in), 1 << 16));
        DataOutputStream out = new DataOutputStream(
            new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16));
        int n = in.readInt();
        byte[][] inputs = new byte[n][];
        for (int t = 0; t < n; t++) {
            inputs[t] = in.readNBytes(in.readInt());
        }
        int alive = Thread.activeCount();
        long total = 0;
        for (int t = 0; t < n; t++) {
            Capped stdout = new Capped(outputCap);
            Capped stderr = new Capped(outputCap);
            PrintStream ps = new PrintStream(stdout, true, encoding);
            System.setIn(new Piped(inputs[t]));
            System.setOut(ps);
            System.setErr(new PrintStream(stderr, true, encoding));
            URLClassLoader loader = new URLClassLoader(path, ClassLoader.getPlatformClassLoader());
            long[] cpu = {-1};
            Throwable[] failure = {null};
            Runnable body = () -> {
                try {
                    Method main = loader.loadClass(mainClass).getMethod("main", String[].class);
                    main.invoke(null, (Object) new String[0]);
                } catch (Throwable e) {
                    failure[0] = e;
                }
                cpu[0] = threads.getCurrentThreadCpuTime();
            };
            Thread thread = new Thread(null, body, "main", stack);
            long start = System.nanoTime();
            thread.start();
            thread.join(wallBudgetMs + 1);
            long wall = System.nanoTime() - start;
            ps.flush();
            String stop = null;
            if (thread.isAlive()) {
                stop = "over the wall budget";
            } else if (failure[0] != null) {
                stop = "threw " + failure[0];
            } else if (stdout.over || stderr.over) {
                stop = "output over the cap";
            } else if (cpu[0] < 0 || cpu[0] > cpuBudgetNs) {
                stop = "over the CPU budget";
            } else if (wall > wallBudgetMs * 1_000_000L) {
                stop = "over the wall budget";
            } else if (Thread.activeCount() > alive) {
                stop = "left a thread running";
            } else if ((total += stdout.size() + stderr.size()) > totalCap) {
                stop = "outputs over the cap";
            }
            if (stop != null) {
                out.writeByte('B');
                out.writeInt(t);
                out.writeUTF(stop.length() > 200 ? stop.substring(0, 200) : stop);
                out.flush();
                Runtime.getRuntime().halt(0);
            }
            out.writeByte('K');
            out.writeLong(cpu[0]);
            out.writeLong(wall);
            out.writeInt(stdout.size());
            stdout.writeTo(out);
            out.writeInt(stderr.size());
            stderr.writeTo(out);
            out.flush();
            loader.close();
        }
        out.writeByte('E');
        out.flush();
        Runtime.getRuntime().halt(0);
    }
}
