package shardlog;

import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.security.PasswordEncoder;

/**
 * Kafka 3.9's own password encoder (server-common
 * org.apache.kafka.security.EncryptingPasswordEncoder, what
 * DynamicBrokerConfig stores dynamic password configs with).
 *
 * <p>Usage: {@code PasswordCodec encode|decode <secret> <cipher> <keyLength>
 * <iterations> <keyFactory or -> <value>}; the last stdout line is
 * {@code {"result": "..."}} or {@code {"error": "..."}}.
 */
public final class PasswordCodec {
    private PasswordCodec() {}

    public static void main(String[] args) {
        String keyFactory = args[5].equals("-") ? null : args[5];
        PasswordEncoder encoder = PasswordEncoder.encrypting(new Password(args[1]), keyFactory,
            args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
        Map<String, Object> report = new LinkedHashMap<>();
        try {
            if (args[0].equals("encode")) {
                report.put("result", encoder.encode(new Password(args[6])));
            } else {
                report.put("result", encoder.decode(args[6]).value());
            }
        } catch (Exception e) {
            report.put("error", e.getMessage());
        }
        System.out.println(Json.of(report));
    }
}
